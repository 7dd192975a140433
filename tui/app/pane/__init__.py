"""The right side: the context pane and one widget per tab, each drawn from the pane's state."""
