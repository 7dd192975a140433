"""The left side: the transcript drawn with the Line API, its layout model, and the composer."""
