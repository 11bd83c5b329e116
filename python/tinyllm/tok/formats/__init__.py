"""Tokenizer file formats: readers that turn a file into parsed components (never a tokenizer:
`tinyllm.tok.load` builds that), with errors that name the JSON path."""
