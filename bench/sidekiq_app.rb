# The worker benchmark's jobs for Sidekiq 6.4 (Debian's ruby-sidekiq), the same four as
# bench/jobs.py: run with `sidekiq -r ./bench/sidekiq_app.rb -c 10` and BENCH_REDIS_URL set.
#
# The logger is at WARN unless BENCH_SIDEKIQ_LOG_LEVEL says otherwise: at WARN Sidekiq writes no
# start/done line per job (its job log off); at INFO, its default and djqueue's, it writes both.
require "sidekiq"

Sidekiq.configure_server do |config|
  config.redis = {url: ENV.fetch("BENCH_REDIS_URL")}
  config.logger.level = Logger.const_get(ENV.fetch("BENCH_SIDEKIQ_LOG_LEVEL", "WARN"))
end
Sidekiq.configure_client { |config| config.redis = {url: ENV.fetch("BENCH_REDIS_URL")} }

# Does nothing: what is measured is the framework's own cost per job.
class BenchNoop
  include Sidekiq::Worker

  def perform(index)
  end
end

# Waits 10 ms, as an I/O-bound job would.
class BenchSleep
  include Sidekiq::Worker

  def perform(index)
    sleep 0.010
  end
end

# Records when it ran: the first job of a drain run marks the start of the clock.
class BenchMark
  include Sidekiq::Worker

  def perform(key)
    Sidekiq.redis { |r| r.set(key, Time.now.to_f.to_s) }
  end
end

# Records how long after `expected_at` (push time or due time) the job started.
class BenchProbe
  include Sidekiq::Worker

  def perform(key, expected_at)
    Sidekiq.redis { |r| r.rpush(key, (Time.now.to_f - expected_at).to_s) }
  end
end
