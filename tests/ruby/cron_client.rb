# What every sidekiq-cron script here starts with, for Sidekiq 6.4 + sidekiq-cron 1.8 (`ruby`)
# and Sidekiq 7.3 + sidekiq-cron 2.3 (`ruby7-cron2`): the client on REDIS_URL, and the log on
# stderr, since stdout carries the script's answer.
require "json"
require "sidekiq"
require "sidekiq-cron"

Sidekiq.configure_client { |c| c.redis = {url: ENV.fetch("REDIS_URL")} }
stderr = Logger.new($stderr)
if Sidekiq.respond_to?(:default_configuration)
  Sidekiq.default_configuration.logger = stderr
else
  Sidekiq.logger = stderr
end
