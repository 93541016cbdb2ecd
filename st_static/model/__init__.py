"""The saved model and how it reads text: the module, word tokenizer, word rows, sums, encode, checks, save/load."""
