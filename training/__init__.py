"""Offline training of the model_store presets on MNIST (imports model_store, never the app)."""
