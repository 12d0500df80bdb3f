"""From a model's word scores to entities: decoding (argmax, Viterbi over valid BIO
sequences; :mod:`.decoding`)."""
