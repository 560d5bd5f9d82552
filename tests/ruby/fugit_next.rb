# The next ticks sidekiq-cron 2.3's parser (Fugit) finds, as JSON:
# `ruby7-cron2 fugit_next.rb EPOCH COUNT < one expression a line`. Prints
# {"EXPRESSION": [epoch, ...] or null when Fugit refuses it}.
require "fugit"
require "json"

start, count = Time.at(Integer(ARGV.fetch(0))).utc, Integer(ARGV.fetch(1))
out = {}
$stdin.each_line(chomp: true) do |text|
  cron = Fugit.parse_cron(text)
  out[text] = cron && (1..count).each_with_object([]) do |_, ticks|
    ticks << cron.next_time(ticks.empty? ? start : Time.at(ticks.last).utc).to_t.to_i
  end
end
puts JSON.generate(out)
