# Quiet or stop one process through Sidekiq's API, as the buttons of its Busy page do:
# `ruby signal.rb IDENTITY quiet|stop`.
require "sidekiq"
require "sidekiq/api"

Sidekiq.configure_client { |c| c.redis = {url: ENV.fetch("REDIS_URL")} }
identity, action = ARGV
process = Sidekiq::ProcessSet.new.find { |p| p["identity"] == identity }
abort "no process #{identity}" unless process
action == "stop" ? process.stop! : process.quiet!
