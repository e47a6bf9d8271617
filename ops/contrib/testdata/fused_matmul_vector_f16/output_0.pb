

Boutput_0.pbJ¥9äAT@(;WÁò¿75&BM4T?