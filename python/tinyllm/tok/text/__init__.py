"""Text below the pipeline: clean `str` input, UTF-8 streaming, the byte alphabet, alignment."""
