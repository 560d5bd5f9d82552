# A Sidekiq server with sidekiq-cron's poller, for the periodic-job tests: Sidekiq 6.4 with
# sidekiq-cron 1.8 (`sidekiq -r cron_app.rb`), or Sidekiq 7.3 with sidekiq-cron 2.3
# (`sidekiq7-cron2 -r cron_app.rb`), which first moves 1.8's entries into its `default`
# namespace. It fires every entry of the schedule (its own and djqueue's) and runs CronRecorder.
#
# Every job this process pushes is tagged "pushed_by" => "sidekiq-cron" and its jid listed in
# `ruby:pushed`, so a test can tell which side pushed each tick. Every job it runs is recorded
# whole (as JSON) in `ruby:ran`.
require "json"
require "sidekiq"
require "sidekiq-cron"

class TagRubyPushes
  include Sidekiq::ClientMiddleware if defined?(Sidekiq::ClientMiddleware)

  def call(_job_class, job, _queue, _redis_pool)
    job["pushed_by"] = "sidekiq-cron"
    Sidekiq.redis { |r| r.call("RPUSH", "ruby:pushed", job["jid"]) }
    yield
  end
end

class RecordRuns
  include Sidekiq::ServerMiddleware if defined?(Sidekiq::ServerMiddleware)

  def call(_worker, job, _queue)
    Sidekiq.redis { |r| r.call("RPUSH", "ruby:ran", JSON.generate(job)) }
    yield
  end
end

# Poll for cron ticks every second (±50% in 1.8: Sidekiq's own jitter) instead of every 30 s.
CRON2 = Sidekiq::Cron.respond_to?(:configure)
Sidekiq::Cron.configure { |c| c.cron_poll_interval = 1 } if CRON2

Sidekiq.configure_server do |c|
  c.redis = {url: ENV.fetch("REDIS_URL")}
  unless CRON2
    c.options[:cron_poll_interval] = 1
    # Set, this drops the 10 s of Sidekiq 6.4's initial wait, which sidekiq-cron's poller
    # inherits; the random 0-5 s left is dropped below.
    c.options[:poll_interval_average] = 1
  end
  c.client_middleware { |chain| chain.add TagRubyPushes }
  c.server_middleware { |chain| chain.add RecordRuns }
end
Sidekiq.configure_client { |c| c.redis = {url: ENV.fetch("REDIS_URL")} }

# No initial wait, so that a short test sees both pollers.
Sidekiq::Cron::Poller.prepend(Module.new do
  private

  def initial_wait
  end
end)

class CronRecorder
  include Sidekiq::Worker

  def perform(*args)
  end
end
