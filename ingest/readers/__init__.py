"""Reading files into text: one reader per format, PDF pages with their layout, OCR, the sandbox."""
