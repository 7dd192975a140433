"""Dollars: the dated price table and the arithmetic over token counts."""
