
B
input_1.pbJ†F¡=F6Ò¿Ñr¿ ¿