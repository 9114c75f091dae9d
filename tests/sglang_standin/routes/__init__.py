"""One module per route family, as in services/model_server/routes/."""
