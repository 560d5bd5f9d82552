# Print what Sidekiq::API sees, as JSON, so a Python test can compare it with djqueue's view.
require "json"
require "sidekiq"
require "sidekiq/api"

Sidekiq.configure_client { |c| c.redis = {url: ENV.fetch("REDIS_URL")} }
stats = Sidekiq::Stats.new
out = {
  "processed" => stats.processed,
  "failed" => stats.failed,
  "enqueued" => stats.enqueued,
  "scheduled_size" => stats.scheduled_size,
  "retry_size" => stats.retry_size,
  "dead_size" => stats.dead_size,
  "queues" => stats.queues,
  "processes" => Sidekiq::ProcessSet.new.map { |p|
    {"identity" => p["identity"], "hostname" => p["hostname"], "pid" => p["pid"],
     "concurrency" => p["concurrency"], "queues" => p["queues"], "busy" => p["busy"],
     "quiet" => p["quiet"], "beat" => p["beat"], "tag" => p["tag"]}
  },
  "work" => Sidekiq::Workers.new.map { |process_id, thread_id, work|
    {"process" => process_id, "thread" => thread_id, "queue" => work["queue"],
     "class" => work["payload"]["class"], "jid" => work["payload"]["jid"], "run_at" => work["run_at"]}
  },
  "retries" => Sidekiq::RetrySet.new.map { |e|
    {"jid" => e.jid, "class" => e.klass, "args" => e.args, "error_class" => e["error_class"],
     "error_message" => e["error_message"], "retry_count" => e["retry_count"], "at" => e.at.to_f,
     "failed_at" => e["failed_at"], "queue" => e.queue, "error_backtrace" => e.error_backtrace}
  },
  "dead" => Sidekiq::DeadSet.new.map { |e| {"jid" => e.jid, "class" => e.klass} },
  "scheduled" => Sidekiq::ScheduledSet.new.map { |e| {"jid" => e.jid, "at" => e.at.to_f} },
  "default_latency" => Sidekiq::Queue.new("default").latency,
}
puts JSON.generate(out)
