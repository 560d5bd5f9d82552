# Render one page of Sidekiq 6.4.1's Web UI (ARGV[0], e.g. /morgue) through Rack, without a
# server; prints {"status", "body"}, with status 500 and the error when the page raises.
require "json"
require "sidekiq"
require "sidekiq/web"
require "rack/mock"
require "rack/session/cookie"

Sidekiq.configure_client { |c| c.redis = {url: ENV.fetch("REDIS_URL")} }
app = Rack::Builder.new do
  use Rack::Session::Cookie, secret: "s" * 64
  run Sidekiq::Web
end
begin
  response = Rack::MockRequest.new(app).get(ARGV.fetch(0))
  puts JSON.generate({"status" => response.status, "body" => response.body})
rescue StandardError => e
  puts JSON.generate({"status" => 500, "body" => "#{e.class}: #{e.message}"})
end
