# Print what sidekiq-cron's API reads of one entry, as JSON: `ruby cron_inspect.rb NAME`.
# "found" is false when Job.find answers nil (a missing or invalid entry).
require "json"
require "sidekiq"
require "sidekiq-cron"

Sidekiq.configure_client { |c| c.redis = {url: ENV.fetch("REDIS_URL")} }
Sidekiq.logger = Logger.new($stderr) # stdout carries the answer
name = ARGV.fetch(0)
job = Sidekiq::Cron::Job.find(name)
out = {"found" => !job.nil?, "all" => Sidekiq::Cron::Job.all.map(&:name).sort}
if job
  out.merge!(
    "valid" => job.valid?,
    "errors" => job.errors,
    "cron" => job.cron,
    "klass" => job.klass,
    "status" => job.status,
    "args" => job.args,
    "message" => Sidekiq.load_json(job.message),
    "last_enqueue_time" => job.last_enqueue_time&.to_f,
    "jid_history" => job.jid_history_from_redis,
    "next_tick" => Fugit.parse(job.cron).next_time.to_f
  )
end
puts JSON.generate(out)
