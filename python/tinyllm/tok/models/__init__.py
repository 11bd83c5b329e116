"""Tokenization models: the step that turns one pre-token into ids."""
