"""The pure core: value types (model, browsing, errors, checks), input rules, and the pipeline's decisions and texts.
May import only the standard library, core/ itself and fingerprint/; no I/O, no store, no engine, no edge."""
