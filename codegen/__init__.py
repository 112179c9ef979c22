"""Generators: schema and layout spec in, Python modules out."""
