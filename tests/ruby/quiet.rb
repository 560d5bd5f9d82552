# Quiet every process through Sidekiq's API, as its Web UI's "Quiet All" does: `ruby quiet.rb`.
require "sidekiq"
require "sidekiq/api"

Sidekiq.configure_client { |c| c.redis = {url: ENV.fetch("REDIS_URL")} }
Sidekiq::ProcessSet.new.each(&:quiet!)
