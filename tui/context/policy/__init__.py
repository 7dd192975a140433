"""What is left out when the window is full: the budget, the truncation policies, the summary's model call."""
