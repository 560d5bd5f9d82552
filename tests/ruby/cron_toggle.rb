# Disable or enable an entry as sidekiq-cron's Web UI does (Job#disable! / #enable!, which
# save the whole entry again): `ruby cron_toggle.rb NAME disable|enable`.
require "sidekiq"
require "sidekiq-cron"

Sidekiq.configure_client { |c| c.redis = {url: ENV.fetch("REDIS_URL")} }
Sidekiq.logger = Logger.new($stderr) # stdout carries the answer
name, action = ARGV
job = Sidekiq::Cron::Job.find(name) or abort("no valid entry #{name}")
action == "disable" ? job.disable! : job.enable!
puts job.status
