# Jobs for the inspection API tests, run by a real Sidekiq 6.4: one that stays busy until the
# test lets it go, and one that always fails, so that Sidekiq itself writes busy work and retries.
require "json"
require "sidekiq"

Sidekiq.configure_server { |c| c.redis = {url: ENV.fetch("REDIS_URL")} }
Sidekiq.configure_client { |c| c.redis = {url: ENV.fetch("REDIS_URL")} }

class ApiBusy
  include Sidekiq::Worker

  def perform(token)
    Sidekiq.redis { |r| r.set("api:busy:#{token}", "started") }
    600.times do
      break if Sidekiq.redis { |r| r.get("api:release") }
      sleep 0.05
    end
  end
end

class ApiFails
  include Sidekiq::Worker
  sidekiq_options retry: 5, retry_queue: "retries"

  def perform(n)
    Sidekiq.redis { |r| r.rpush("api:failed", n) }
    raise ArgumentError, "failing on purpose #{n}"
  end
end
