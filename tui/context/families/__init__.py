"""What ctxpane knows of model families and providers, as tables: templates, vocabularies, windows, reasoning rules."""
