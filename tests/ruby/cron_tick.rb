# Let sidekiq-cron's poller decide one entry's tick at a chosen time, as its poll loop does
# (Job#test_and_enque_for_time!): `ruby cron_tick.rb NAME EPOCH`. Prints "pushed" or "skipped".
require "sidekiq"
require "sidekiq-cron"

Sidekiq.configure_client { |c| c.redis = {url: ENV.fetch("REDIS_URL")} }
Sidekiq.logger = Logger.new($stderr) # stdout carries the answer
name, epoch = ARGV
job = Sidekiq::Cron::Job.find(name) or abort("no valid entry #{name}")
time = Time.at(Float(epoch)).utc
if job.should_enque?(time)
  job.enque!
  job.remove_previous_enques(time)
  puts "pushed"
else
  puts "skipped"
end
