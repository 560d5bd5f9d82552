# A small Sidekiq 6.4 application for the compatibility tests. Jobs record what they saw in
# Redis, so the Python side can check it.
require "json"
require "sidekiq"

Sidekiq.configure_server do |c|
  c.redis = {url: ENV.fetch("REDIS_URL")}
  # Poll the schedule about once a second (and skip the 10 s initial wait) in tests.
  c.options[:poll_interval_average] = ENV["SIDEKIQ_POLL"].to_f if ENV["SIDEKIQ_POLL"]
end
Sidekiq.configure_client { |c| c.redis = {url: ENV.fetch("REDIS_URL")} }

class RubyRecorder
  include Sidekiq::Worker

  def perform(*args)
    Sidekiq.redis { |r| r.rpush("ruby:ran", JSON.generate({"jid" => jid, "args" => args})) }
  end
end
