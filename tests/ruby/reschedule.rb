# Reschedule every scheduled job to ARGV[0] (epoch seconds) with Sidekiq's own API, which
# re-encodes each job and ZINCRBYs that JSON: it only finds djqueue's entries if djqueue wrote
# them byte for byte as Ruby would. Prints how many entries it rescheduled.
require "sidekiq"
require "sidekiq/api"

Sidekiq.configure_client { |c| c.redis = {url: ENV.fetch("REDIS_URL")} }
at = Float(ARGV.fetch(0))
entries = Sidekiq::ScheduledSet.new.to_a
entries.each { |entry| entry.reschedule(at) }
puts entries.size
