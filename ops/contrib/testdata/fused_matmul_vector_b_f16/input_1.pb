

B
input_1.pbJ
-’¾„¸¹