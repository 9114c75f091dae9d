"""The scoring path: which function scores a sample (`dispatch`), the loaded functions (`registry`), one call
under its timeout to a typed result (`scoring`), and the version strings of everything that scores
(`versioning`)."""
