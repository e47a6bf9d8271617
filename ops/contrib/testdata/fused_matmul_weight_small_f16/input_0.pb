

B
input_0.pbJ$ð¼Z³l¿õ;@4Æ±">P8a)E·N<]= 9€6Ù¸j¶Ë8æ: