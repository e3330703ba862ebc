Bh.0.ln_2.weightJ WÉ7½*¹Ž½’
µ<vN½Ð¼\½=¶‘¼eAQ<±\=