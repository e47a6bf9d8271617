

B
input_1.pbJY´Jº­8,Œ·s9–7X¯ò»#­á7%³ž­