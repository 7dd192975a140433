"""`ctxpane doctor`'s checks of a server and a gateway against the engine, and their report."""
