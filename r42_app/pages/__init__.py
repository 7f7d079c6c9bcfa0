"""One module per route group; `r42_app.r42_app` registers them."""
