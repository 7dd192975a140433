"""One screen per file; a screen answers through dismiss and never touches the controller."""
