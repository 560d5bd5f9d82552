# Act on one entry through sidekiq-cron's Web UI tab as a browser would, without a server:
# `ruby cron_web.rb NAME ACTION` (Sidekiq 6.4 + sidekiq-cron 1.8) or `ruby7-cron2 cron_web.rb
# NAME ACTION` (Sidekiq 7.3 + sidekiq-cron 2.3); ACTION is a button of the tab: disable,
# enable, enqueue, delete. It reads the Cron tab (its CSRF token and session cookie), then posts
# the button's form. Prints {"listed", "status"}: whether the tab
# listed NAME, and the HTTP status of the post (302: done, redirected back to the tab).
require_relative "cron_client"
require "sidekiq/web"
require "sidekiq/cron/web"
require "rack/mock"
require "rack/session/cookie"

name, action = ARGV.fetch(0), ARGV.fetch(1)
app = Rack::Builder.new do
  use Rack::Session::Cookie, secret: "s" * 64, same_site: true
  run Sidekiq::Web
end
browser = Rack::MockRequest.new(app)
tab = browser.get("/cron")
raise "the Cron tab answered #{tab.status}: #{tab.body[0, 500]}" unless tab.status == 200
token = tab.body[/name='authenticity_token' value='([^']+)'/, 1] or raise "no CSRF token"
cookie = tab.headers["Set-Cookie"].to_s.split(";").first
job = Rack::Utils.escape_path(name)
# sidekiq-cron 2 names the namespace in its routes; 1.8 has none.
path = Sidekiq::Cron.respond_to?(:configure) ? "/cron/namespaces/default/jobs/#{job}" : "/cron/#{job}"
post = browser.post(
  "#{path}/#{action}",
  "HTTP_COOKIE" => cookie,
  :params => {"authenticity_token" => token}
)
puts JSON.generate({"listed" => tab.body.include?(">#{name}<"), "status" => post.status})
