# Print what sidekiq-cron's API reads of one entry, as JSON: `ruby cron_inspect.rb NAME` (1.8 on
# Sidekiq 6.4, or `ruby7-cron2 cron_inspect.rb NAME`: 2.3 on Sidekiq 7.3). "found" is false when
# Job.find answers nil (a missing or invalid entry).
require_relative "cron_client"

name = ARGV.fetch(0)
job = Sidekiq::Cron::Job.find(name)
out = {"found" => !job.nil?, "all" => (Sidekiq::Cron::Job.method(:all).arity.zero? ? Sidekiq::Cron::Job.all : Sidekiq::Cron::Job.all("*")).map(&:name).sort}
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
    "next_tick" => Fugit.parse(job.cron).next_time.to_f,
    "namespace" => job.respond_to?(:namespace) ? job.namespace : nil
  )
end
puts JSON.generate(out)
