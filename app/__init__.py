"""vit-digits HTTP service: FastAPI app serving the model store's ViT and CNN with dynamic batching."""

__version__ = "0.1.0"
