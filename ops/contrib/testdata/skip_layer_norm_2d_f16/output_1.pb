
Boutput_1.pbJXsš>™È©>¶·>NA¬>K¾>M9¥>’ª>