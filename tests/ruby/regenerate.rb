# Read JSON on standard input and write it back with Ruby's JSON.generate, which is what
# Sidekiq.dump_json uses: a Python test compares the bytes with djqueue's encoding.
require "json"

print JSON.generate(JSON.parse($stdin.read))
