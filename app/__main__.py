"""``python -m app``: run the service (supervisor, engine and front-end workers; see app.supervisor)."""

from .supervisor import main

if __name__ == "__main__":
    main()
