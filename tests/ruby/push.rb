# Push a job the way a Ruby app does: `ruby push.rb CLASS QUEUE ARGS_JSON [AT]`; prints the jid.
require "json"
require "sidekiq"

Sidekiq.configure_client { |c| c.redis = {url: ENV.fetch("REDIS_URL")} }
klass, queue, args, at = ARGV
item = {"class" => klass, "queue" => queue, "args" => JSON.parse(args)}
item["at"] = at.to_f if at
puts Sidekiq::Client.push(item)
