"""Grounded integer and date slots: value mentions in a document and the candidates computed from them."""
