require "json"
require "time"

# Append-only JSON lines the tests read back (src/rails-devise.ts): sign-ins and sign-outs in one
# file, Action Cable connections in another. One process, many threads: a mutex keeps lines whole.
module EventLog
  LOCK = Mutex.new

  def self.sign_in(event, user_id, scope)
    append("sign-ins.jsonl", event: event, user_id: user_id, scope: scope)
  end

  def self.cable(event, user_id)
    append("cable.jsonl", event: event, user_id: user_id)
  end

  def self.append(file, fields)
    line = JSON.generate(fields.merge(at: Time.now.utc.iso8601(6), pid: Process.pid))
    LOCK.synchronize { File.open(File.join(STATE, file), "a") { |f| f.puts(line) } }
  end
end
