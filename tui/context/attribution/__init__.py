"""The marked render that says where each character of the document came from, and fails closed when the marks change the rendering."""
