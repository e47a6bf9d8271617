

Boutput_0.pbJ@G«ÄİC7EÉÀ8¹6¤A%<F½[DÙ;ÉÛ°
D