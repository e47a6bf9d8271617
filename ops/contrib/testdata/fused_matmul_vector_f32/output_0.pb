
Boutput_0.pbJ(—4?€’<@‰y
@|Re?Ì+ÀãIþ¿èz§>lÛD@l+Š>V­ê?