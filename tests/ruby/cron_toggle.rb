# Disable or enable an entry as sidekiq-cron's Web UI does (Job#disable! / #enable!, which
# save the whole entry again): `ruby cron_toggle.rb NAME disable|enable` (sidekiq-cron 1.8), or
# `ruby7-cron2 cron_toggle.rb NAME disable|enable [migrate]` (2.3; `migrate` first moves 1.8's
# entries into its namespace, as its server does when it starts).
require_relative "cron_client"

name, action, migrate = ARGV
Sidekiq::Cron::Job.migrate_old_jobs_if_needed! if migrate == "migrate"
job = Sidekiq::Cron::Job.find(name) or abort("no valid entry #{name}")
action == "disable" ? job.disable! : job.enable!
puts job.status
