# Jobs that always fail, to compare what Sidekiq 6.4.1 does with a failed job's `retry` field
# with what djqueue does. Each records its jid in the list `ran` before it raises.
require "sidekiq"

Sidekiq.configure_server { |c| c.redis = {url: ENV.fetch("REDIS_URL")} }
Sidekiq.configure_client { |c| c.redis = {url: ENV.fetch("REDIS_URL")} }

module RecordsAndFails
  def perform(*)
    Sidekiq.redis { |r| r.rpush("ran", jid) }
    raise ArgumentError, "failing on purpose"
  end
end

class FailsRetryOff
  include Sidekiq::Worker
  include RecordsAndFails
  sidekiq_options retry: false
end

class FailsDefault
  include Sidekiq::Worker
  include RecordsAndFails
end
