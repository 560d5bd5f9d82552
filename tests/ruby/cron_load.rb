# Load one sidekiq-cron entry as a Ruby app's schedule does:
# `ruby cron_load.rb NAME CRON CLASS QUEUE`. Prints the errors sidekiq-cron found, as JSON
# ({} when the entry was saved).
require "json"
require "sidekiq"
require "sidekiq-cron"

Sidekiq.configure_client { |c| c.redis = {url: ENV.fetch("REDIS_URL")} }
Sidekiq.logger = Logger.new($stderr) # stdout carries the answer
name, cron, klass, queue = ARGV
errors = Sidekiq::Cron::Job.load_from_hash(
  name => {"cron" => cron, "class" => klass, "queue" => queue}
)
puts JSON.generate(errors)
