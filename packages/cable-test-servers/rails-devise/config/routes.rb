# Loaded during initialize!: drawn any later, devise_for leaves Devise's URL helpers (session_path)
# out of its own views; drawn earlier, Devise cannot configure Warden yet.
Rails.application.routes.draw do
  devise_for :users
  root to: "home#show"
  # JSON by default, so that an anonymous call is Devise's 401, not a redirect to the form.
  get "/me", to: "me#show", defaults: { format: :json }
  get "/anycable_token", to: "anycable_tokens#show", defaults: { format: :json }
end
