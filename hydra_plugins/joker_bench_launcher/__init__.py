"""joker-bench's Hydra launcher plugins (Hydra finds launchers only under ``hydra_plugins``)."""
