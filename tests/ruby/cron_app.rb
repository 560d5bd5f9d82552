# A Sidekiq 6.4 server with sidekiq-cron 1.8's poller, for the periodic-job tests: it fires
# every entry of `cron_jobs` (its own and djqueue's) and runs CronRecorder.
#
# Every job this process pushes is tagged "pushed_by" => "sidekiq-cron" and its jid listed in
# `ruby:pushed`, so a test can tell which side pushed each tick. Every job it runs is recorded
# whole (as JSON) in `ruby:ran`.
require "json"
require "sidekiq"
require "sidekiq-cron"

class TagRubyPushes
  def call(_worker_class, job, _queue, _redis_pool)
    job["pushed_by"] = "sidekiq-cron"
    Sidekiq.redis { |r| r.rpush("ruby:pushed", job["jid"]) }
    yield
  end
end

class RecordRuns
  def call(_worker, job, _queue)
    Sidekiq.redis { |r| r.rpush("ruby:ran", JSON.generate(job)) }
    yield
  end
end

Sidekiq.configure_server do |c|
  c.redis = {url: ENV.fetch("REDIS_URL")}
  # Poll for cron ticks every second (±50%: Sidekiq's own jitter) instead of every 30 s.
  c.options[:cron_poll_interval] = 1
  # Set, this drops the 10 s of Sidekiq 6.4's initial wait, which sidekiq-cron's poller
  # inherits; the random 0-5 s left is dropped below, so that a short test sees both pollers.
  c.options[:poll_interval_average] = 1
  c.client_middleware { |chain| chain.add TagRubyPushes }
  c.server_middleware { |chain| chain.add RecordRuns }
end
Sidekiq.configure_client { |c| c.redis = {url: ENV.fetch("REDIS_URL")} }

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
