require "base64"
require "json"
require "openssl"

# The token anycable-go's JWT identification accepts (--jwt_secret, ?jid=): HS256 over
# {"ext": <the connection's identifiers, as a JSON string>, "exp": …}, as anycable-rails mints it.
# Debian has no jwt gem; HS256 is one HMAC.
module AnycableJwt
  def self.encode(identifiers, expires_in:, secret: ENV.fetch("ANYCABLE_JWT_SECRET"))
    header = { alg: "HS256", typ: "JWT" }
    payload = { ext: JSON.generate(identifiers), exp: Time.now.to_i + expires_in }
    signed = [header, payload].map { |part| base64url(JSON.generate(part)) }.join(".")
    "#{signed}.#{base64url(OpenSSL::HMAC.digest("SHA256", secret, signed))}"
  end

  def self.base64url(bytes) = Base64.urlsafe_encode64(bytes, padding: false)
end
